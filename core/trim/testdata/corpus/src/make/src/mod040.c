#include <stdio.h>

int mod040(int x)
{
    int unused_40 = 40;
    return x + 40;
}
