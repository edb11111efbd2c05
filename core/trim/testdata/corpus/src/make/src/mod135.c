#include <stdio.h>

int mod135(int x)
{
    return x + 135;
}
