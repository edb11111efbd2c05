#include <stdio.h>

int mod079(int x)
{
    return x + 79;
}
