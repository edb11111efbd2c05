#include <stdio.h>

int mod000(int x)
{
    int unused_0 = 0;
    return x + 0;
}
