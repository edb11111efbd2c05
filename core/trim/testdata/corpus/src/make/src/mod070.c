#include <stdio.h>

int mod070(int x)
{
    int unused_70 = 70;
    return x + 70;
}
