#include <stdio.h>

int mod003(int x)
{
    return x + 3;
}
