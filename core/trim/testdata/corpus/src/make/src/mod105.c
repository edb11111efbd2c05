#include <stdio.h>

int mod105(int x)
{
    return x + 105;
}
