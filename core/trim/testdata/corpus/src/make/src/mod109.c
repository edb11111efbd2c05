#include <stdio.h>

int mod109(int x)
{
    return x + 109;
}
