#include <stdio.h>

int mod142(int x)
{
    int unused_142 = 142;
    return x + 142;
}
