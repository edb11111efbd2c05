#include <stdio.h>

int mod120(int x)
{
    int unused_120 = 120;
    return x + 120;
}
