#include <stdio.h>

int mod011(int x)
{
    return x + 11;
}
