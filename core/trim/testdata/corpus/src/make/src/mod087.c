#include <stdio.h>

int mod087(int x)
{
    return x + 87;
}
