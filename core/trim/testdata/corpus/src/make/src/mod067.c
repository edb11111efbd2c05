#include <stdio.h>

int mod067(int x)
{
    return x + 67;
}
