#include <stdio.h>

int mod016(int x)
{
    int unused_16 = 16;
    return x + 16;
}
