#include <stdio.h>

int mod020(int x)
{
    int unused_20 = 20;
    return x + 20;
}
