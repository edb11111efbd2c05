#include <stdio.h>

int mod005(int x)
{
    return x + 5;
}
