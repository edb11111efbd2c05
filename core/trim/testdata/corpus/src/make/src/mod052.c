#include <stdio.h>

int mod052(int x)
{
    int unused_52 = 52;
    return x + 52;
}
