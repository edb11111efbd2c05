#include <stdio.h>

int mod064(int x)
{
    int unused_64 = 64;
    return x + 64;
}
