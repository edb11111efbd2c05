#include <stdio.h>

int mod115(int x)
{
    return x + 115;
}
