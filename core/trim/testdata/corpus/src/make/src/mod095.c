#include <stdio.h>

int mod095(int x)
{
    return x + 95;
}
