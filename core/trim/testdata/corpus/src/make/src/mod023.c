#include <stdio.h>

int mod023(int x)
{
    return x + 23;
}
