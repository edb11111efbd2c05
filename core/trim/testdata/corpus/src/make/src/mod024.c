#include <stdio.h>

int mod024(int x)
{
    int unused_24 = 24;
    return x + 24;
}
