#include <stdio.h>

int mod141(int x)
{
    return x + 141;
}
