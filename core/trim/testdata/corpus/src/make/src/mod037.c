#include <stdio.h>

int mod037(int x)
{
    return x + 37;
}
