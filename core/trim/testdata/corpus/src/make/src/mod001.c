#include <stdio.h>

int mod001(int x)
{
    return x + 1;
}
