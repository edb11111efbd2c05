#include <stdio.h>

int mod030(int x)
{
    int unused_30 = 30;
    return x + 30;
}
