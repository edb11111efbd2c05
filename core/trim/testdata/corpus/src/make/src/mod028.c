#include <stdio.h>

int mod028(int x)
{
    int unused_28 = 28;
    return x + 28;
}
