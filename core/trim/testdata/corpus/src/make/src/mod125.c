#include <stdio.h>

int mod125(int x)
{
    return x + 125;
}
