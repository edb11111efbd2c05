#include <stdio.h>

int mod027(int x)
{
    return x + 27;
}
