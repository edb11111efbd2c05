#include <stdio.h>

int mod025(int x)
{
    return x + 25;
}
