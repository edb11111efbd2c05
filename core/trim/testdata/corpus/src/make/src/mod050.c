#include <stdio.h>

int mod050(int x)
{
    int unused_50 = 50;
    return x + 50;
}
