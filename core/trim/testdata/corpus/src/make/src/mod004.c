#include <stdio.h>

int mod004(int x)
{
    int unused_4 = 4;
    return x + 4;
}
