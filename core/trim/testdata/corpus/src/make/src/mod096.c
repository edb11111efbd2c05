#include <stdio.h>

int mod096(int x)
{
    int unused_96 = 96;
    return x + 96;
}
