#include <stdio.h>

int mod100(int x)
{
    int unused_100 = 100;
    return x + 100;
}
