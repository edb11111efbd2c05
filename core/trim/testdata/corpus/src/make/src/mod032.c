#include <stdio.h>

int mod032(int x)
{
    int unused_32 = 32;
    return x + 32;
}
