#include <stdio.h>

int mod002(int x)
{
    int unused_2 = 2;
    return x + 2;
}
