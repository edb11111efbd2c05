#include <stdio.h>

int mod147(int x)
{
    return x + 147;
}
