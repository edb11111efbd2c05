#include <stdio.h>

int mod013(int x)
{
    return x + 13;
}
