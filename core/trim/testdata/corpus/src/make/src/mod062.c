#include <stdio.h>

int mod062(int x)
{
    int unused_62 = 62;
    return x + 62;
}
