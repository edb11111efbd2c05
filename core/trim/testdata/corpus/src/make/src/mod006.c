#include <stdio.h>

int mod006(int x)
{
    int unused_6 = 6;
    return x + 6;
}
