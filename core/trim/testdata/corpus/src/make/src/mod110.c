#include <stdio.h>

int mod110(int x)
{
    int unused_110 = 110;
    return x + 110;
}
