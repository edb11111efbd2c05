#include <stdio.h>

int mod034(int x)
{
    int unused_34 = 34;
    return x + 34;
}
