#include <stdio.h>

int mod130(int x)
{
    int unused_130 = 130;
    return x + 130;
}
