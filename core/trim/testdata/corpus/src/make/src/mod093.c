#include <stdio.h>

int mod093(int x)
{
    return x + 93;
}
