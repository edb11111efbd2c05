#include <stdio.h>

int mod048(int x)
{
    int unused_48 = 48;
    return x + 48;
}
