#include <stdio.h>

int mod012(int x)
{
    int unused_12 = 12;
    return x + 12;
}
