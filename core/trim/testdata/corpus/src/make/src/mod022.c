#include <stdio.h>

int mod022(int x)
{
    int unused_22 = 22;
    return x + 22;
}
