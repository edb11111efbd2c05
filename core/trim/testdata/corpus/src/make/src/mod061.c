#include <stdio.h>

int mod061(int x)
{
    return x + 61;
}
