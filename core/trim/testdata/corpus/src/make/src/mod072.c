#include <stdio.h>

int mod072(int x)
{
    int unused_72 = 72;
    return x + 72;
}
