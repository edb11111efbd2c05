#include <stdio.h>

int mod063(int x)
{
    return x + 63;
}
