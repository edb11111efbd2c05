#include <stdio.h>

int mod046(int x)
{
    int unused_46 = 46;
    return x + 46;
}
