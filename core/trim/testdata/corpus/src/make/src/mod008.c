#include <stdio.h>

int mod008(int x)
{
    int unused_8 = 8;
    return x + 8;
}
