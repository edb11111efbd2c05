#include <stdio.h>

int mod101(int x)
{
    return x + 101;
}
