#include <stdio.h>

int mod014(int x)
{
    int unused_14 = 14;
    return x + 14;
}
