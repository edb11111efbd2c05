#include <stdio.h>

int mod128(int x)
{
    int unused_128 = 128;
    return x + 128;
}
