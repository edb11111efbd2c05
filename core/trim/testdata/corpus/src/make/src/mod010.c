#include <stdio.h>

int mod010(int x)
{
    int unused_10 = 10;
    return x + 10;
}
