#include <stdio.h>

int mod144(int x)
{
    int unused_144 = 144;
    return x + 144;
}
