#include <stdio.h>

int mod060(int x)
{
    int unused_60 = 60;
    return x + 60;
}
