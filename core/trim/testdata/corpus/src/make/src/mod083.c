#include <stdio.h>

int mod083(int x)
{
    return x + 83;
}
